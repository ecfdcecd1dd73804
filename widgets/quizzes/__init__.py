"""One quiz per chapter: ``widgets.quizzes.<topic>.quiz()`` builds it, computing every accepted
answer with ``widgets.models`` and the catalog (``widgets.hardware``) at the time it is called.
The engine and the page's rule are in ``widgets.quiz``."""
