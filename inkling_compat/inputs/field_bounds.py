"""The bounds and argparse types of the input fields, shared by the plain records
(inputs/models.py) and the pydantic models (inputs/input_schema.py): each int field's range with
why (carried into schemas/*.schema.json), the strict-bool marker, and which server arguments
argparse converts as int or float. Imports pydantic only inside the hooks a pydantic model calls."""

from __future__ import annotations

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any


def _int_text(value: int) -> str:
    """An int for a message; never str() of a huge one (Python refuses > 4,300 digits)."""
    return str(value) if abs(value) < 10**40 else f"an int of about {int(value.bit_length() * 0.30103) + 1} digits"


class _Bounded:
    """An int field's range, with why: `low` is the least value sglang can run with, `high` a
    bound well past every real model or deployment (the checker's facts walk layers, experts
    and TP ranks, so an absurd size is refused here, at the edge, not looped over). A boolean
    is refused too (pydantic would read true as 1). The JSON schemas carry the range
    (`minimum`, `maximum`, and why in `$comment`). `strict`: the value must already be an int.
    config.json and manifests are read as they are (sglang reads config.json through
    transformers without conversion: "64" or 64.0 reach range() and arithmetic, which raise
    TypeError); only server arguments are converted from text, by argparse.

    The pydantic hooks import pydantic only when a pydantic model is built with this marker
    (inputs/input_schema.py)."""

    __slots__ = ("low", "high", "low_why", "high_why", "strict")

    def __init__(self, low: int | None, high: int | None, low_why: str = "", high_why: str = "", strict: bool = True):
        self.low, self.high, self.low_why, self.high_why, self.strict = low, high, low_why, high_why, strict

    def __repr__(self) -> str:
        return f"_Bounded(low={self.low!r}, high={self.high!r}, strict={self.strict!r})"

    def holds(self, value: int) -> bool:
        """An exact int within the range (what the plain reader takes as it is)."""
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    def _check(self, value: Any, handler: Any) -> Any:
        from pydantic_core import PydanticCustomError

        # An exact int (nearly every value) is what the inner int schema returns unchanged:
        # only its range is checked (the call back into pydantic is a third of this check).
        if type(value) is not int:
            value = self._typed(value, handler)
            if not isinstance(value, int):
                return value
        if self.low is not None and value < self.low:
            raise PydanticCustomError("too_small", "must be at least {low} ({why}); got {got}", {"low": self.low, "why": self.low_why, "got": _int_text(value)})
        if self.high is not None and value > self.high:
            raise PydanticCustomError("too_large", "must be at most {high} ({why}); got {got}", {"high": self.high, "why": self.high_why, "got": _int_text(value)})
        return value

    def _typed(self, value: Any, handler: Any) -> Any:
        from pydantic_core import PydanticCustomError

        if isinstance(value, bool):
            raise PydanticCustomError("int_type", "Input should be a valid integer, not a boolean ({got})", {"got": str(value).lower()})
        if self.strict and isinstance(value, (str, float)):
            kind = "a string" if isinstance(value, str) else "a float"
            raise PydanticCustomError(
                "int_type",
                "Input should be a valid integer, not {kind} ({got}): the file is read as it is, and range() or arithmetic on it raises TypeError",
                {"kind": kind, "got": repr(value[:40]) if isinstance(value, str) else repr(value)},
            )
        return handler(value)

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_wrap_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(self, schema: Any, handler: Any) -> dict[str, Any]:
        out = dict(handler(schema))
        why = []
        if self.low is not None:
            out["minimum"] = self.low
            why.append(f"at least {self.low}: {self.low_why}")
        if self.high is not None:
            out["maximum"] = self.high
            why.append(f"at most {self.high}: {self.high_why}")
        if why:
            out["$comment"] = "; ".join(why)
        return out


_bounded = _Bounded


class _StrictBool:
    """A bool field taken only as a bool (config.json booleans as they are: sglang tests their
    truthiness, a string "false" is true): pydantic's `Strict()` where a pydantic model is built."""

    __slots__ = ()

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from typing import Annotated

        from pydantic import Strict

        return handler.generate_schema(Annotated[source, Strict()])

    def __repr__(self) -> str:
        return "STRICT"


STRICT = _StrictBool()


# Upper bounds: each is far past what real models and deployments use (in brackets) and keeps
# every walk of the facts short; schemas/*.schema.json carry them (`maximum`, `$comment`).
_LAYERS = _bounded(1, 4096, "a model has at least one layer", "real models have at most a few hundred layers [DeepSeek-V3: 61, Llama 3.1 405B: 126]")
_WIDTH = _bounded(1, 1 << 20, "no layer of a model has a size of zero or below", "real hidden and FFN sizes are below 2**17 [Llama 3.1 405B: 16384 / 53248]")
_HEADS = _bounded(1, 1 << 14, "a model has at least one attention head", "real models have at most a few hundred heads [Llama 3.1 405B: 128]")
_VOCAB = _bounded(1, 1 << 24, "a vocabulary has at least one token", "real vocabularies are below 2**19 tokens [Gemma: 262144]")
_EXPERTS = _bounded(0, 1 << 14, "an expert count is never negative", "real MoE models have at most a few hundred experts [DeepSeek-V3: 256]")
_SMALL_COUNT = _bounded(0, 1 << 14, "a count is never negative", "real models stay far below it")
_PARALLEL = _bounded(1, 4096, "a parallel size is a number of GPUs, at least one: sglang 0.5.23's argparse accepts 0 or a negative int and start-up then fails", "a tensor/expert/data-parallel world of more than 4096 GPUs is no real deployment; the checker replays every TP rank", strict=False)
# Server arguments whose negative values are rules of their own are still 64-bit ints: torch
# and the CEL rules compute in int64 (a larger int would reach CEL as a double, and a rule's
# arithmetic on it fail).
_INT64_WHY = "a 64-bit int: torch and the checker's rules compute in int64"
_INT64 = _bounded(-(1 << 63), (1 << 63) - 1, _INT64_WHY, _INT64_WHY, strict=False)
_SLOTS = _bounded(-(1 << 63), 1 << 16, _INT64_WHY, "real servers batch at most a few hundred adapters; the checker replays every slot", strict=False)
_DIM = _bounded(0, (1 << 63) - 1, "a tensor's dimension is never negative: torch and safetensors refuse it", "torch sizes are 64-bit signed ints; a larger one would reach the rules as a double")
_RANK = _bounded(-(1 << 63), 1 << 16, _INT64_WHY, "LoRA ranks are below the hidden size [real: 8-1024]", strict=False)


# sglang's server arguments whose argparse `type` is int (or float): the flag's text is what
# `type` converts, so a value the YAML gives as anything else is refused the way argparse
# refuses it (arg_utils.py `_infer_type_func`; Python's argparse `_get_value`).
_ARGPARSE_INTS = (
    "max_lora_rank", "max_loaded_loras", "max_loras_per_batch", "max_lora_chunk_size", "tp_size", "ep_size", "dp_size",
    "attn_dp_size", "moe_dense_tp_size", "page_size", "ep_num_redundant_experts",
    "attn_cp_size",  # the audit's block below
)
_ARGPARSE_FLOATS = ("lora_drain_wait_threshold",)
