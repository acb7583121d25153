"""Scale-out runs: N clients, each sending TSBS's interleaved group i of N, meeting, and their records merged."""
