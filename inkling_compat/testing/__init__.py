"""Hypothesis strategies and the scenarios rule examples merge onto."""
