"""The frames a run hands the client, whatever their library: their kinds (``kinds``: pandas NumPy- or
Arrow-backed, pyarrow, Polars), and each kind made from pandas or Arrow, converted for ILP, sliced (``convert``)."""
