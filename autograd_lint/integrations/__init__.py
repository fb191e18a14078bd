"""The linter inside other tools: the flake8 and pylint plugins (with
`pylint_noise.py`, pylint's own messages that are no defect on a Function),
the pytest plugin and the language server (`lsp.py`). Their entry points
keep the short names users type (`autograd_lint.pylint_plugin`,
`autograd_lint.flake8_plugin:Flake8Checker`, the `pytest11` plugin
`autograd_lint.pytest_plugin`): thin modules at the package's top level."""
