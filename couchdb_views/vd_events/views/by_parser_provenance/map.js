function (doc) {
  if (typeof doc.parser_name === "string" && typeof doc.unique_key === "string")
    emit([doc.parser_name, doc.unique_key], {
      warc_file: doc.warc_file,
      warc_offset: doc.warc_offset,
      warc_record_id: doc.warc_record_id,
      archived: doc.archived,
      parser_version: doc.parser_version,
      superseded_by: doc.superseded_by,
      withdrawn_by: doc.withdrawn_by,
      replaced_by: doc.replaced_by
    });
}
