"""Type stubs of xg's native module (see the package docstring)."""

from os import PathLike
from typing import Any, Callable, Dict, List, Literal, Optional, Sequence, Tuple, Union

class CompileError(RuntimeError):
    """A grammar, schema, regex, structural tag or tool list was refused;
    the message is the compiler's diagnostics."""

class TokenizerInfo:
    def __init__(
        self,
        encoded_vocab: Sequence[Union[str, bytes]],
        vocab_type: int = 0,
        *,
        vocab_size: Optional[int] = None,
        stop_token_ids: Optional[Union[int, Sequence[int]]] = None,
        add_prefix_space: bool = False,
        special_token_ids: Optional[Sequence[int]] = None,
    ) -> None: ...
    @staticmethod
    def from_huggingface(
        tokenizer: Any,
        *,
        vocab_size: Optional[int] = None,
        stop_token_ids: Optional[Union[int, Sequence[int]]] = None,
    ) -> "TokenizerInfo": ...
    @staticmethod
    def from_tokenizer_json(
        path_or_json: Union[str, bytes, "PathLike[str]"],
        *,
        vocab_size: Optional[int] = None,
        stop_token_ids: Optional[Union[int, Sequence[int]]] = None,
    ) -> "TokenizerInfo": ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def vocab_type(self) -> int: ...
    @property
    def add_prefix_space(self) -> bool: ...
    @property
    def prepend_space_in_tokenization(self) -> bool: ...
    @property
    def stop_token_ids(self) -> List[int]: ...
    @property
    def special_token_ids(self) -> List[int]: ...
    @property
    def absent_token_ids(self) -> List[int]: ...
    @property
    def decoded_vocab(self) -> List[bytes]: ...

class CancelFlag:
    def __init__(self) -> None: ...
    def set(self) -> None: ...
    def is_set(self) -> bool: ...

class Grammar:
    @staticmethod
    def from_ebnf(ebnf_string: str, *, root_rule_name: str = "root") -> "Grammar": ...
    @staticmethod
    def from_json_schema(
        schema: Any,
        *,
        any_whitespace: bool = True,
        indent: Optional[int] = None,
        separators: Optional[Tuple[str, str]] = None,
        strict_mode: bool = True,
        max_whitespace_cnt: Optional[int] = 32,
        any_order: bool = False,
    ) -> "Grammar": ...
    @staticmethod
    def from_regex(regex: str) -> "Grammar": ...
    @staticmethod
    def builtin_json_grammar() -> "Grammar": ...
    @property
    def root_rule_name(self) -> str: ...

class CompiledGrammar:
    def serialize(self) -> bytes: ...
    @staticmethod
    def deserialize(data: bytes, tokenizer_info: TokenizerInfo) -> "CompiledGrammar": ...
    @staticmethod
    def open(path: Union[str, "PathLike[str]"], tokenizer_info: TokenizerInfo) -> "CompiledGrammar": ...
    @property
    def memory_size_bytes(self) -> int: ...
    @property
    def tokenizer_info(self) -> TokenizerInfo: ...
    @property
    def warnings(self) -> str: ...
    @property
    def cache_fallback(self) -> Optional[str]: ...

class GrammarCompiler:
    def __init__(
        self,
        tokenizer_info: TokenizerInfo,
        *,
        max_threads: int = 8,
        cache_enabled: bool = True,
        cache_limit_bytes: int = -1,
        time_limit: Optional[float] = 2.0,
        max_rules: int = 100000,
        memory_limit_bytes: Optional[int] = -1,
    ) -> None: ...
    def compile_json_schema(
        self,
        schema: Any,
        *,
        any_whitespace: bool = True,
        indent: Optional[int] = None,
        separators: Optional[Tuple[str, str]] = None,
        strict_mode: bool = True,
        max_whitespace_cnt: Optional[int] = 32,
        any_order: bool = False,
        cancel: Optional[CancelFlag] = None,
    ) -> CompiledGrammar: ...
    def json_schema_report(
        self,
        schema: Any,
        *,
        any_whitespace: bool = True,
        indent: Optional[int] = None,
        separators: Optional[Tuple[str, str]] = None,
        strict_mode: bool = True,
        max_whitespace_cnt: Optional[int] = 32,
        any_order: bool = False,
    ) -> List[Dict[str, str]]: ...
    def compile_builtin_json_grammar(self, *, cancel: Optional[CancelFlag] = None) -> CompiledGrammar: ...
    def compile_regex(self, regex: str, *, cancel: Optional[CancelFlag] = None) -> CompiledGrammar: ...
    def compile_grammar(
        self,
        grammar: Union[str, Grammar],
        root_rule_name: str = "root",
        *,
        cancel: Optional[CancelFlag] = None,
    ) -> CompiledGrammar: ...
    def compile_structural_tag(
        self,
        tag: Any,
        triggers: Optional[Sequence[str]] = None,
        *,
        cancel: Optional[CancelFlag] = None,
    ) -> CompiledGrammar: ...
    def compile_tools(
        self,
        tools: Any,
        *,
        format: str = "qwen",
        reasoning: str = "allowed",
        tool_choice: Any = None,
        parallel_tool_calls: bool = True,
        cancel: Optional[CancelFlag] = None,
    ) -> CompiledGrammar: ...
    def clear_cache(self) -> None: ...
    def get_cache_size_bytes(self) -> int: ...
    @property
    def tokenizer_info(self) -> TokenizerInfo: ...

class GrammarMatcher:
    def __init__(
        self,
        compiled_grammar: CompiledGrammar,
        *,
        override_stop_tokens: Optional[Sequence[int]] = None,
        terminate_without_stop_token: bool = False,
        max_rollback_tokens: int = -1,
    ) -> None: ...
    def accept_token(self, token_id: int, *, debug_print: bool = False) -> bool: ...
    def accept_string(self, input_str: Union[str, bytes], *, debug_print: bool = False) -> bool: ...
    def validate_tokens(self, tokens: Sequence[int]) -> int: ...
    def traverse_draft_tree(
        self,
        retrieve_next_token: Sequence[int],
        retrieve_next_sibling: Sequence[int],
        draft_tokens: Sequence[int],
        token_bitmask: Any,
        time_threshold: float = -1.0,
        temperatures: Any = None,
    ) -> bool: ...
    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0, *, debug_print: bool = False) -> bool: ...
    def find_jump_forward_string(self) -> str: ...
    def find_jump_forward_tokens(self, tokenize: Callable[[str], Sequence[int]]) -> Tuple[int, List[int]]: ...
    def forced_bytes(self) -> bytes: ...
    def rollback(self, num_tokens: int = 1) -> None: ...
    def reset(self) -> None: ...
    def fork(self) -> "GrammarMatcher": ...
    def is_terminated(self) -> bool: ...
    def is_completed(self) -> bool: ...
    def stop_reason(
        self,
    ) -> Optional[Tuple[Literal["stop_token", "terminated", "complete"], Optional[int]]]: ...
    def get_captures(self) -> List[Tuple[str, str]]: ...
    def get_tool_call_events(self) -> List[Dict[str, Any]]: ...
    def num_steps(self) -> int: ...
    def expected(self) -> str: ...
    @property
    def stop_token_ids(self) -> List[int]: ...
    @property
    def max_rollback_tokens(self) -> int: ...
    @property
    def compiled_grammar(self) -> CompiledGrammar: ...

class BatchGrammarMatcher:
    def __init__(self, max_threads: Union[int, str, None] = None) -> None: ...
    def batch_fill_next_token_bitmask(
        self,
        matchers: Sequence[GrammarMatcher],
        bitmask: Any,
        indices: Optional[Sequence[int]] = None,
        *,
        debug_print: bool = False,
    ) -> List[bool]: ...
    @staticmethod
    def batch_accept_token(
        matchers: Sequence[GrammarMatcher], tokens: Sequence[int], *, debug_print: bool = False
    ) -> List[bool]: ...
    @staticmethod
    def batch_accept_string(
        matchers: Sequence[GrammarMatcher], strings: Sequence[Union[str, bytes]], *, debug_print: bool = False
    ) -> List[bool]: ...
    @staticmethod
    def batch_rollback(matchers: Sequence[GrammarMatcher], counts: Sequence[int]) -> None: ...
