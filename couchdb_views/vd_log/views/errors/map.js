function (doc) {
  if (typeof doc.access_datetime === "string" && doc.result !== "success") emit(doc.access_datetime, null);
}
