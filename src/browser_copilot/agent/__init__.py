"""The agent: a LangGraph StateGraph whose nodes all route with `Command(goto=...)`."""
