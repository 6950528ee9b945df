"""The trace event schema: layout, fields, decoding, columns, text safety."""
