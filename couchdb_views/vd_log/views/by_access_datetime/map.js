function (doc) {
  if (typeof doc.access_datetime === "string") emit(doc.access_datetime, null);
}
