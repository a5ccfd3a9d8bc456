"""Chrome trace-event JSON (Kineto, Perfetto JSON, ONNX Runtime, xprof's trace viewer).

`reader` holds the registered `READER`; `stream*` convert files larger than memory to Parquet.
The format's quirks and what each module normalises: docs/traces.md.
"""
