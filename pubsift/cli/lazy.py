"""Subcommands imported only when chosen: ``pubsift --help`` imports none of them."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    _SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:  # not subscriptable at run time
    _SubParsers = argparse._SubParsersAction


class LazySubcommands(_SubParsers):
    """Subcommands whose arguments are added when one of them is chosen: the parser of
    each is made up front with its name and help only, and its ``module:function`` is
    imported and called just before the chosen one parses the rest of the line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: dict[str, str] = {}

    def add_lazy(self, name: str, text: str, target: str) -> argparse.ArgumentParser:
        self._pending[name] = target
        return self.add_parser(name, help=text, description=text)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        target = self._pending.pop(values[0], None)
        if target is not None:
            import importlib

            module, _, function = target.partition(":")
            getattr(importlib.import_module(module), function)(self.choices[values[0]])
        super().__call__(parser, namespace, values, option_string)


def lazy_subparsers(
    p: argparse.ArgumentParser, dest: str, required: bool = True, metavar: str | None = None
) -> LazySubcommands:
    """``p``'s subcommands as :class:`LazySubcommands`."""
    # typeshed types add_subparsers() as a plain _SubParsersAction whatever ``action`` is
    return cast(
        LazySubcommands,
        p.add_subparsers(dest=dest, required=required, action=LazySubcommands, metavar=metavar),
    )
