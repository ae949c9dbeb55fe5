"""The headline benchmark's parts (``python bench/headline.py`` runs them): the simulated
LLM and its latency model (``llm``), the tasks and their known answers (``tasks``,
``catalog``), what each strategy answers (``schedule``), the contenders on obelisk
(``on_obelisk``) and on LangGraph (``on_langgraph``), the request-size check
(``growth``) and the printed report (``report``)."""
