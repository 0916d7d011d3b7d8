function (doc) {
  if (typeof doc.entity === "string" && typeof doc.datetime === "string") emit([doc.entity, doc.datetime], null);
}
