"""The model and its configuration: what a module declares and which classes
are Functions project-wide (`model.py`, `project.py`), the finding records,
the rule table and its pages (`registry.py`, `docs.py`), configuration,
files and their lines (notebooks' too), and what a file's bytes say without
parsing (`scan.py`, read by the analysis and the rules as well as the
engine). The lowest layer: it imports nothing else of the package."""
