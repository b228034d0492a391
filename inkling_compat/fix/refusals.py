"""Why an edit to the user's file is not made: raised by the YAML and JSON editors."""

from __future__ import annotations


class CannotEdit(Exception):
    """An edit that cannot be made safely in this file's layout (the reason is the message)."""


class Conflict(CannotEdit):
    """An edit the inputs do not determine after all (a rename onto a key that is set too)."""
