function (doc) {
  if (typeof doc.datetime === "string") [].concat(doc.vote_id, doc.vote_ids).forEach(function (id) { if (typeof id === "string") emit([id, doc.datetime], null); });
}
