"""Stage 3, rendering: the model laid out as source with the jinja2 templates (``templates/``): each
module (``package.py``), its ``.pyi`` face (``face.py``), ``visitors.py``, and what each turns off
for the checkers (``suppressions.py``)."""
