function (doc) {
  if (typeof doc.committee_code === "string" && typeof doc.datetime === "string") emit([doc.committee_code, doc.datetime], null);
}
