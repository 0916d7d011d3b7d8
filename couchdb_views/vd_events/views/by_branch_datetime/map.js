function (doc) {
  if (typeof doc.branch === "string" && typeof doc.datetime === "string") emit([doc.branch, doc.datetime], null);
}
