"""Server integrations: thin layers over xg's API that follow each server's
own contract, importing the server only when it is installed.

- ``xg.integrations.vllm``: vLLM's structured-output backend
  (``StructuredOutputBackend`` and ``StructuredOutputGrammar``);
- ``xg.integrations.sglang``: an SGLang grammar backend
  (``register_grammar_backend``);
- ``xg.integrations.transformers``: a ``LogitsProcessor`` for
  ``model.generate``.
"""
