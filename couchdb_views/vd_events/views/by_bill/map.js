function (doc) {
  if (typeof doc.datetime === "string") [].concat(doc.bill_ids).forEach(function (id) { if (typeof id === "string") emit([id, doc.datetime], null); });
}
