module github.com/parosdb/paros

go 1.26
