"""Datasets fetched by plain URL are downloaded once: the real download code against a small HTTP server on 127.0.0.1
that serves the course's local copies (../shared/data). No other address is ever contacted."""
import ipaddress, os, socket, threading, urllib.parse, pathlib
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
import pytest
from transformers_scratch import data

SHARED = pathlib.Path(os.environ.get('TFS_DATA') or pathlib.Path(__file__).resolve().parents[2]/'shared'/'data')

class Handler(SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        self.server.requests.append(self.path)
        if self.server.drop:                        # send the headers and half the file, then drop the connection
            p = pathlib.Path(self.translate_path(self.path))
            body = p.read_bytes()
            self.send_response(200); self.send_header('Content-Length', str(len(body))); self.end_headers()
            self.wfile.write(body[:len(body) // 2]); self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR); self.close_connection = True
            return
        super().do_GET()

@pytest.fixture
def server():
    srv = ThreadingHTTPServer(('127.0.0.1', 0), partial(Handler, directory=str(SHARED)))
    srv.requests, srv.drop = [], False
    t = threading.Thread(target=srv.serve_forever, daemon=True); t.start()
    yield srv
    srv.shutdown(); srv.server_close()

@pytest.fixture
def home(tmp_path, monkeypatch, server):
    "A machine with no copy of the datasets, whose plain URLs point at the loopback server"
    monkeypatch.setenv('HOME', str(tmp_path))
    for k in ('TFS_DATA', 'TFS_OFFLINE'): monkeypatch.delenv(k, raising=False)
    base = f'http://127.0.0.1:{server.server_address[1]}/'
    ds = dict(data.DATASETS)
    ds['tinyshakespeare'] = ds['tinyshakespeare'][:3] + (base + 'tinyshakespeare/input.txt',)
    ds['multi30k'] = ds['multi30k'][:3] + (base + 'multi30k/',)
    for name in ('tinyshakespeare', 'multi30k'):
        assert ipaddress.ip_address(urllib.parse.urlparse(ds[name][3]).hostname).is_loopback
    monkeypatch.setattr(data, 'DATASETS', ds)
    return tmp_path/'.tfs'/'data'

def test_first_call_downloads_second_makes_no_request(home, server):
    assert not data.have_data('tinyshakespeare')
    txt = data.shakespeare_text()
    assert len(txt) == 1115394 and server.requests == ['/tinyshakespeare/input.txt']
    assert (home/'tinyshakespeare'/'input.txt').read_bytes() == (SHARED/'tinyshakespeare'/'input.txt').read_bytes()
    assert data.have_data('tinyshakespeare')
    assert data.shakespeare_text() == txt and len(server.requests) == 1           # found in ~/.tfs/data
    assert sorted(os.listdir(home/'tinyshakespeare')) == ['input.txt']           # no temporary file left

def test_multi30k_nine_files_once(home, server):
    pairs = data.multi30k_pairs()
    assert len(pairs) == 29000 and len(server.requests) == 9
    data.multi30k_pairs('val', 'de', 'en'); data.multi30k_pairs('test_2016_flickr')
    assert len(server.requests) == 9

def test_offline_after_a_good_download(home, server, monkeypatch):
    data.data_path('tinyshakespeare')
    server.shutdown(); server.server_close()
    monkeypatch.setenv('TFS_OFFLINE', '1')
    assert data.data_path('tinyshakespeare') == home/'tinyshakespeare'
    assert len(data.shakespeare_text()) == 1115394

def test_interrupted_download_leaves_nothing_that_looks_complete(home, server):
    server.drop = True
    with pytest.raises(data.DataNotFoundError, match='nothing was kept'): data.data_path('tinyshakespeare')
    d = home/'tinyshakespeare'
    assert not (d/'input.txt').exists() and (not d.exists() or os.listdir(d) == [])
    assert not data.have_data('tinyshakespeare')
    server.drop = False                                                          # the next call downloads it again
    assert len(data.shakespeare_text()) == 1115394 and len(server.requests) == 2

def test_partial_multi30k_is_not_complete(home, server):
    "An interrupted multi30k download keeps its good files, but the folder is not taken as the dataset until all are there"
    server.drop = True
    with pytest.raises(data.DataNotFoundError): data.data_path('multi30k')
    assert not data.have_data('multi30k')
    server.drop = False
    assert len(data.multi30k_pairs()) == 29000 and len(server.requests) == 10

def test_wrong_content_is_thrown_away(home, server, tmp_path, monkeypatch):
    "A file of the wrong size or checksum (an error page, another version) is not kept"
    files = dict(data._FILES); files['tinyshakespeare'] = {'input.txt': (1115394, '0' * 64)}
    monkeypatch.setattr(data, '_FILES', files)
    with pytest.raises(data.DataNotFoundError, match='checksum'): data.data_path('tinyshakespeare')
    assert not (home/'tinyshakespeare'/'input.txt').exists()
