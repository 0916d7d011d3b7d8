"""LOD Laundromat 2: seeds from sitemaps, download, unpack, recode, guess, parse and clean RDF.

One module per concern: :mod:`.uris` (seed keys), :mod:`.seeds` (records, staleness),
:mod:`.sitemaps`, :mod:`.states` (the status machine), :mod:`.download_records`, :mod:`.spider`,
:mod:`.archives`, :mod:`.encodings`, :mod:`.formats`, :mod:`.cleaning` (one module per job below it,
see its docstring; the sort collects the VoID ``void:dataDump`` links), :mod:`.steps` (the per-file
steps run off the reactor), :mod:`.worker_pool` (the processes that run them), :mod:`.processor` (the
state machine), :mod:`.fetching`, :mod:`.contexts` and :mod:`.seedlist` (the ``ll_seeds`` store).
"""

DB = "ll_seeds"
