"""`explain --format json`: per error found in the text (explain.findings), its line, its
text and the matching rules, best first, each with what `explain` prints for it."""

from __future__ import annotations

from typing import Any, Sequence


def explain_document(found: Sequence[Any]) -> list[dict[str, Any]]:
    """`explain --format json`: per error found in the text, its line, text and the matching
    rules (best first) with what `explain` prints for the best."""
    from inkling_compat.report.urls import rule_url

    out = []
    for finding in found:
        matches = []
        for match in finding.matches:
            rule = match.rule
            matches.append(
                {
                    "rule_id": rule.id,
                    "title": rule.title,
                    "severity": rule.severity,
                    "origin": rule.origin,
                    "error_class": rule.error_class,
                    "stage": rule.stage,
                    "source": {"path": rule.source.path, "line": rule.source.line} if rule.source else None,
                    "explanation": rule.explanation.strip(),
                    "when": rule.when,
                    "condition": rule.condition,
                    "fixes": list(rule.fixes),
                    "score": match.score,
                    "url": rule_url(rule.id),
                }
            )
        out.append({"line": finding.line, "text": finding.text, "matches": matches})
    return out
