"The exercise checks, one module per lesson: written in the lessons (`#| export checks.<lesson>`), started by nbs/checks/*.checks.ipynb"
