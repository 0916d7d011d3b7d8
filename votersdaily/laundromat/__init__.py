"""LOD Laundromat 2: seeds from sitemaps, download, unpack, recode, guess, parse and clean RDF.

One module per concern: :mod:`.uris` (seed keys), :mod:`.seeds` (records, staleness),
:mod:`.sitemaps`, :mod:`.states` (the status machine), :mod:`.download_records`, :mod:`.spider`,
:mod:`.archives`, :mod:`.encodings`, :mod:`.formats`, :mod:`.cleaning` (which also collects the
VoID ``void:dataDump`` links), :mod:`.steps` (the per-file steps run off the reactor) and
:mod:`.seedlist` (the ``ll_seeds`` store).
"""

DB = "ll_seeds"
