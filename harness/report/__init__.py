"""Records shown: the text tables of ``harness compare`` and the self-contained HTML report."""
