function (doc) {
  if (typeof doc.datetime === "string") [].concat(doc.vote_id, doc.vote_ids).forEach(function (id, i, ids) { if (typeof id === "string" && ids.indexOf(id) === i) emit([id, doc.datetime], null); });
}
