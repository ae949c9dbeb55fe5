"""The implementers' kit: checking another implementation of the protocol against obelisk.

- ``protocol``: the adapter protocol's requests and answers, and their shapes;
- ``local``: obelisk's own answer to each request, in process;
- ``server``: ``obelisk adapter``, obelisk speaking the protocol on stdin/stdout;
- ``client``: ``AdapterClient``, obelisk's side, talking to an adapter subprocess;
- ``pack``: the vector pack shipped in the package, its JSON Schema, ``--export``;
- ``strategies``, ``planstrategies`` and ``fuzz``: hypothesis strategies and ``obelisk
  fuzz`` (these need hypothesis, the ``obelisk[testing]`` extra; nothing else here
  imports it); ``difference``: what the fuzzer compares, and how a difference is made
  minimal;
- ``pytest_plugin``: ``pytest --obelisk-against 'CMD'``, each vector as a test;
- ``cli``: the commands.
"""
