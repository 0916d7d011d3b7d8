function (doc) {
  if (typeof doc.parser_name === "string" && typeof doc.datetime === "string") emit([doc.parser_name, doc.datetime], null);
}
