/*
 * The object stores' XML reading (lib/store/xml.c) on the kinds of documents Azure and S3 send:
 * listings, error bodies, self-closing elements, attributes, entities and character references,
 * documents cut short; and the URL decoding beside it.
 */
#include "testutil.h"

#include "store/xml.h"

static char *text(const char *doc, const char *name)
{
	int oom = 0;
	char *t = st__xml_text(doc, doc + strlen(doc), name, &oom);
	assert_int_equal(oom, 0);
	return t;
}

static void test_elements_in_order(void **state)
{
	static const char doc[] =
		"<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults ServiceEndpoint=\"x\">"
		"<Prefix>p/</Prefix><Marker/><Blobs>"
		"<Blob><Name>p/a.json</Name><Properties><Last-Modified>Tue, 10 Nov 2020 00:49:58 "
		"GMT</Last-Modified><Etag>0x8D1</Etag><Content-Length>7</Content-Length>"
		"</Properties></Blob>"
		"<BlobPrefix><Name>p/sub/</Name></BlobPrefix>"
		"<Blob><Name Encoded=\"true\">p%2Fb</Name><Properties><Content-Length>0"
		"</Content-Length></Properties></Blob>"
		"</Blobs><NextMarker>2!72!MDAwMDA&amp;</NextMarker></EnumerationResults>";
	const char *p = doc, *end = doc + strlen(doc), *in, *in_end;
	char *s;
	(void)state;
	/* <Blob> matches neither <Blobs> nor <BlobPrefix> */
	assert_non_null(p = st__xml_next(p, end, "Blob", &in, &in_end));
	s = st__xml_text(in, in_end, "Name", NULL);
	assert_string_equal(s, "p/a.json");
	free(s);
	s = st__xml_text(in, in_end, "Last-Modified", NULL);
	assert_string_equal(s, "Tue, 10 Nov 2020 00:49:58 GMT");
	free(s);
	assert_null(st__xml_text(in, in_end, "Content-MD5", NULL));
	assert_non_null(p = st__xml_next(p, end, "Blob", &in, &in_end));
	s = st__xml_text(in, in_end, "Name", NULL); /* an element with attributes */
	assert_string_equal(s, "p%2Fb");
	free(s);
	assert_null(st__xml_next(p, end, "Blob", &in, &in_end));
	/* prefixes, the marker (self-closing: empty), the next marker (unescaped) */
	assert_non_null(st__xml_next(doc, end, "BlobPrefix", &in, &in_end));
	s = st__xml_text(in, in_end, "Name", NULL);
	assert_string_equal(s, "p/sub/");
	free(s);
	s = text(doc, "Marker");
	assert_string_equal(s, "");
	free(s);
	s = text(doc, "NextMarker");
	assert_string_equal(s, "2!72!MDAwMDA&");
	free(s);
}

static void test_unescape(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"a&lt;b&gt;c&amp;d&quot;e&apos;f", "a<b>c&d\"e'f"},
		{"&#65;&#x42;&#X43;&#x1F600;", "ABC\xf0\x9f\x98\x80"},
		{"&#xe9;t&#233;", "\xc3\xa9t\xc3\xa9"},
		/* what is no character stays as it is */
		{"&#0;&#xD800;&#x110000;", "&#0;&#xD800;&#x110000;"},
		{"a & b; &unknown; &#xZZ; &#12 &", "a & b; &unknown; &#xZZ; &#12 &"},
		{"", ""},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *s = st__xml_unescape(cases[i].in, strlen(cases[i].in));
		assert_non_null(s);
		assert_string_equal(s, cases[i].out);
		free(s);
	}
}

static void test_error_bodies_and_truncation(void **state)
{
	static const char err[] = "\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"utf-8\"?><Error>"
				  "<Code>AuthenticationFailed</Code><Message>Server failed to "
				  "authenticate the request.\nRequestId:1\nTime:2</Message>"
				  "<AuthenticationErrorDetail>The MAC signature found ..."
				  "</AuthenticationErrorDetail></Error>";
	const char *in, *in_end;
	char *s;
	(void)state;
	s = text(err, "Code");
	assert_string_equal(s, "AuthenticationFailed");
	free(s);
	/* a document cut short: an element without its end tag is not there */
	assert_null(st__xml_next(err, err + 60, "Code", &in, &in_end));
	assert_null(st__xml_next(err, err + 80, "Message", &in, &in_end));
	assert_null(text("<Code>x", "Code"));
	assert_null(text("<Code", "Code"));
	assert_null(text("", "Code"));
	/* a name is matched whole, with attributes or white space after it */
	s = text("<CodeX>1</CodeX><Code a='1'>2</Code>", "Code");
	assert_string_equal(s, "2");
	free(s);
	s = text("<Code\n>3</Code>", "Code");
	assert_string_equal(s, "3");
	free(s);
}

static void test_url_decode(void **state)
{
	static const struct {
		const char *in;
		int plus;
		const char *out;
	} cases[] = {
		{"a%2Fb%20c%41", 0, "a/b cA"},  {"a+b", 0, "a+b"},       {"a+b", 1, "a b"},
		{"%zz%4", 0, "%zz%4"},          {"%e2%82%ac", 0, "\xe2\x82\xac"}, {"", 0, ""},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *s = st__url_decode(cases[i].in, strlen(cases[i].in), cases[i].plus);
		assert_string_equal(s, cases[i].out);
		free(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elements_in_order),
		cmocka_unit_test(test_unescape),
		cmocka_unit_test(test_error_bodies_and_truncation),
		cmocka_unit_test(test_url_decode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
