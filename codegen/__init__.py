"""Build-time tools: load and validate a schema folder, build the render model, render the
templates and write `generated/`. Never imported by the engine at run time."""
