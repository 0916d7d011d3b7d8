"""What people use the events for: ICS and JSON feeds, a static day-by-day site, a spider health page.

Everything here reads the stores only through the views of :mod:`votersdaily.store.views`, so it works
the same on the embedded store and on CouchDB.
"""
