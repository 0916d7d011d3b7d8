function (doc) {
  if (typeof doc.datetime === "string") [].concat(doc.bill_ids).forEach(function (id, i, ids) { if (typeof id === "string" && ids.indexOf(id) === i) emit([id, doc.datetime], null); });
}
