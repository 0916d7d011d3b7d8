function (doc) {
  if (typeof doc.datetime === "string") emit(doc.datetime, null);
}
