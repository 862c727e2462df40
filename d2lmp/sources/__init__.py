"""The project's sources as data: the record of one source, the papers, and the documents (code, vendor
documents, library documentation). ``d2lmp.bibliography`` cites them."""
