"""Pulumi programs, one package per cloud, each exposing `program(plan)`.

Which program belongs to which cloud is declared once, in that cloud's CloudSpec
(reclaunch/providers/<cloud>/__init__.py). Importing this package imports no Pulumi SDK.
"""
