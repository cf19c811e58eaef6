"""Reference pages of the docs site generated from the code, so they cannot drift from it.

The MkDocs hook (``docgen/hook.py``) fills each ``<!-- tracescore:generate NAME -->`` marker of a
hand-written page with the page part :data:`docgen.pages.GENERATORS` names, at every build;
``python -m docgen`` writes the parts into the committed pages.
"""
