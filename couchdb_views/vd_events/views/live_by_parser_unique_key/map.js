function (doc) {
  if (typeof doc.parser_name === "string" && typeof doc.unique_key === "string" && !doc.superseded_by) emit([doc.parser_name, doc.unique_key], null);
}
