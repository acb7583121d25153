#!/bin/sh
# Runs QuestDB in the foreground (PID 1 after exec, so `docker stop` reaches the JVM) with the server root
# of the upstream image. JAVA_OPTS replaces the JVM options: QuestDB keeps its data off the heap, so a
# modest heap is enough, and parallel GC is what QuestDB's own launcher uses. Extra arguments go to
# ServerMain.
set -e
# shellcheck disable=SC2086  # JAVA_OPTS is a list of options: split it on purpose
exec java ${JAVA_OPTS:--Xms256m -Xmx2g -XX:+UseParallelGC} \
    -p /opt/questdb/questdb.jar -m io.questdb/io.questdb.ServerMain -d /var/lib/questdb "$@"
