"""TEMP"""
from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class ColumnAudit:
    column: str; dtype: str; role: str; path: str; questdb_type: str|None; parallel: bool; fix: str|None; refusal: str|None
def is_string_like(s):
    return pd.api.types.is_string_dtype(s.dtype) and not isinstance(s.dtype, pd.CategoricalDtype)
DEFAULT_PROTOCOL_VERSION = 2
def audit_frame(frame, at, symbols, protocol_version=2):
    out=[]
    for c in frame.columns:
        d=frame[c].dtype
        role = "designated timestamp" if c==at else "symbol" if c in symbols else "field"
        if c==at: t="TIMESTAMP"
        elif c in symbols: t="SYMBOL"
        elif pd.api.types.is_bool_dtype(d): t="BOOLEAN"
        elif pd.api.types.is_integer_dtype(d): t="LONG"
        elif pd.api.types.is_float_dtype(d): t="DOUBLE"
        elif pd.api.types.is_datetime64_any_dtype(d): t="TIMESTAMP"
        elif isinstance(d, pd.CategoricalDtype): t="SYMBOL"
        else: t="VARCHAR"
        out.append(ColumnAudit(c,str(d),role,"native buffer",t,True,None,None))
    return out
def first_refusal(a): return None
def apply_fixes(frame, audits): return frame
def audit_table(audits): return "\n".join(f"{a.column} {a.dtype} {a.questdb_type}" for a in audits)
