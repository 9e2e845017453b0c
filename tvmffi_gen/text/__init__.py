"""Text every stage lays out the same way: line fitting (``layout.py``) and counted words
(``wording.py``)."""
