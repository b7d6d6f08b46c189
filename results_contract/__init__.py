"""The results contract: what a campaign's results are, written by the testbed and
read by the analysis. It is the bottom layer: `testbed` and `analysis` both import
it, and it imports neither. Importing the package loads nothing (no pandas); its
modules load pandas, when they need it, inside the functions that use it.

- `schema`: the trials and connections tables (columns, kinds, reasons) and the
  display names of metrics, settings and networks;
- `profiles_meta`: what the analysis knows of the profiles (each one's label, the
  order, the baseline and the pairs compared), read from profiles/ or a manifest;
- `trial_folder`: the names of the files in a trial's folder;
- `results_io`: the one place a results folder's files, which may be hostile, are
  opened;
- `sqlite_fd`: a SQLite store someone else wrote, read through the fd it was opened by;
- `manifest`: the campaign manifest (manifest.json) as a typed, versioned model, its
  sessions and the rule its top level is derived by;
- `shapes`: the shapes a results folder's other JSON files must have;
- `checks`: the ranges every value of a loaded table must be in;
- `trialfiles`: a trial's kept files, read from such a folder;
- `load`: the one safe loader (a store, a folder or an export, to one DataFrame);
- `cells`: tables made safe to open in a spreadsheet.

May import: nothing of `testbed` or `analysis`.
"""
