"""Stores and policies: what a memory policy keeps and what it injects."""
