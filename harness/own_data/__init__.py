"""The user's own data: files and DataFrames read in bounded pieces, their dtypes audited, sent as the user's
code would."""
