"""The public entry points: `check(...) -> Report`, and `evaluate(...) -> Checked` for callers
that also need the loaded inputs and the derived facts (the runtime).

`check(argv=[...])` checks a launch command (`python -m sglang.launch_server ...`, `sglang serve
...`, or the server arguments alone) as `check(config=...)` checks a config file: the model and
the adapters sglang would read are found from the arguments (inputs/launch.py,
inputs/read_by_sglang.py).
"""

from __future__ import annotations

from typing import Any

from inkling_compat.engine.evaluate import Checked
from inkling_compat.engine.evaluate import check as _check
from inkling_compat.engine.evaluate import evaluate as _evaluate
from inkling_compat.facts.inputs import Inputs


def _config(config: Any, argv: Any) -> Any:
    if argv is None:
        return config
    if config is not None:
        from inkling_compat.errors import InputError

        raise InputError("<argv>", "argv", "give either config= or argv= (a --config file goes inside the command)")
    from inkling_compat.inputs.launch import parse_launch

    return parse_launch([str(word) for word in argv])


def _release(config: Any, argv: Any, kwargs: dict[str, Any]) -> Any:
    """The release of the check (inputs/release.py), found before a launch command is parsed:
    its arguments are read with that release's table."""
    from inkling_compat.inputs.release import Release, find_release

    given = kwargs.get("sglang_version")
    release = given if isinstance(given, Release) else find_release(given, config if argv is None else None)
    kwargs["sglang_version"] = release
    return release


def check(config: Any = None, adapter: Any = None, *, argv: Any = None, **kwargs: Any) -> Any:
    """`engine.evaluate.check`, with `argv=` for a launch command; `sglang_version=` a release
    0.5.16..0.5.23 or "53ccafdf" (None: found, inputs/release.py)."""
    from inkling_compat.inputs import argument_table

    with argument_table.using(_release(config, argv, kwargs).version):
        return _check(_config(config, argv), adapter, **kwargs)


def evaluate(config: Any = None, adapter: Any = None, *, argv: Any = None, **kwargs: Any) -> Checked:
    from inkling_compat.inputs import argument_table

    with argument_table.using(_release(config, argv, kwargs).version):
        return _evaluate(_config(config, argv), adapter, **kwargs)


def check_deployment(path: Any, adapter: Any = None, *, env: Any = None, **kwargs: Any) -> list[tuple[Any, Any]]:
    """Every sglang command of a deployment file (a Kubernetes manifest or stream, a compose
    file, a SkyPilot task, a Dockerfile, a shell script; inputs/deployment.py) checked as
    `check(argv=...)` checks one: [(the command with its `place`, its Report)], in file order.
    An InputError names the file (and the command's place when one command cannot be used)."""
    from inkling_compat.inputs.deployment import read_deployment

    deployment = read_deployment(str(path), env=env)
    return [(command, _check(launch_config(command), adapter, **kwargs)) for command in deployment.commands]


def launch_config(command: Any, *, placed: bool = True) -> Any:
    """A deployment command parsed as sglang parses it (inputs/launch.py `launch_config`)."""
    from inkling_compat.inputs.launch import launch_config as parsed

    return parsed(command, placed=placed)


__all__ = ["check", "check_deployment", "evaluate", "Checked", "Inputs"]
