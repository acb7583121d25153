"""What goes over the wire to a server, behind one small interface (``interface``: open a connection, hand it a
frame, a row or bytes, make what it holds durable, close it; and what a return means): ILP over HTTP and over TCP
through the official client (``ilp``), QWP through its ``questdb.connect()`` (``qwp``), the client's errors made one
line for both (``client_errors``), raw ILP bytes over TCP (``raw``: the replay's), picked by the configuration's
scheme (``registry``), from where and how senders connect (``settings``).

Nothing outside this package branches on the protocol: what differs between wires (what a commit's return means,
whether a failed send may leave part of itself committed, what a server must offer, what a tuning sweep may vary)
is asked of the wire. A new protocol is one module and one registry entry.
"""
