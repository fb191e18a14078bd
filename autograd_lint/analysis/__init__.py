"""Shared analyses: tensor-valued judgement, aliases, return arity, path facts."""
