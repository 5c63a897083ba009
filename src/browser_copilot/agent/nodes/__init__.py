"""One node per file, each `async def name(state, runtime) -> Command[Literal[...]]`."""
