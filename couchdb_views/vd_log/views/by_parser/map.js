function (doc) {
  if (typeof doc.parser_name === "string" && typeof doc.access_datetime === "string") emit([doc.parser_name, doc.access_datetime], null);
}
