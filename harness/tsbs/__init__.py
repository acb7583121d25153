"""TSBS, exactly, free of the command line: the use-case registry and a subpackage per use case (``cpu_only``,
``devops``, ``iot``) beside the pieces they share: Go's math/rand and time text (``go``), the hosts, the data
set's flags, table schemas, interleaved groups, compiled kernels, and the query types and files."""
