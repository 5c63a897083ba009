"""Safety: the destructive-action classifier and the in-page guard, hand-over detection, code vetting,
URL policy and redaction (F40-F48)."""
