
t
record.protoxp"X
Record
id (	Rid
status (	Rstatus
ssn (	Rssn
notes (	Rnotesbproto3