"""The implementers' kit: checking another implementation of the protocol against obelisk.

- ``protocol``: the adapter protocol's requests and answers, and their shapes;
- ``local``: obelisk's own answer to each request, in process;
- ``server``: ``obelisk adapter``, obelisk speaking the protocol on stdin/stdout;
- ``client``: ``AdapterClient``, obelisk's side, talking to an adapter subprocess;
- ``pack``: the vector pack shipped in the package, its JSON Schema, ``--export``;
- ``strategies`` and ``fuzz``: hypothesis strategies and ``obelisk fuzz`` (these two need
  hypothesis, the ``obelisk[testing]`` extra; nothing else here imports it);
- ``cli``: the commands.
"""
