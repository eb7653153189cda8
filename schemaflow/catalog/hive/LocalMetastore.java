// The local metastore server schemaflow starts on a project's embedded Derby database
// (schemaflow/catalog/hive/local_server.py): Hive's own metastore handler, the one an embedded client or
// Hive's HiveMetaStore server runs, served over plain Thrift on the loopback address alone. Hive 2.3's
// HiveMetaStore main listens on every interface and has no option to bind one, which would open a
// laptop's metastore to its network with no authentication.
//
// The metastore server has no authentication, and the loopback address is open to every user of the
// machine: where the system says who holds a connection (Linux's socket tables), a connection of
// another user than the server's is closed unanswered, as the database's files would refuse them.
//
// Usage: java -cp <pyspark's jars> LocalMetastore PORT, with the metastore's settings as -D system
// properties (HiveConf reads its variables from them). It prints "serving" once it listens.
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.protocol.TProtocol;
import org.apache.thrift.server.ServerContext;
import org.apache.thrift.server.TServerEventHandler;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TSocket;
import org.apache.thrift.transport.TTransport;

public final class LocalMetastore {
  private LocalMetastore() {}

  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    HiveConf conf = new HiveConf(LocalMetastore.class);
    // Opens the Derby database (failing here if another process holds it) and creates its tables if new.
    ThriftHiveMetastore.Iface handler = HiveMetaStore.newRetryingHMSHandler("local metastore", conf, false);
    TServerSocket socket = new TServerSocket(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    TThreadPoolServer.Args server = new TThreadPoolServer.Args(socket)
        .processor(new ThriftHiveMetastore.Processor<>(handler))
        .protocolFactory(new TBinaryProtocol.Factory())
        .minWorkerThreads(2)
        .maxWorkerThreads(64);
    TThreadPoolServer serving = new TThreadPoolServer(server);
    serving.setServerEventHandler(new OwnUserOnly(ownUser()));
    System.out.println("serving");
    System.out.flush();
    serving.serve();
  }

  /** Closes, before anything is read from it, a connection of another user than {@code owner} (null: anyone's). */
  private static final class OwnUserOnly implements TServerEventHandler {
    private final String owner;

    OwnUserOnly(String owner) {
      this.owner = owner;
    }

    @Override
    public ServerContext createContext(TProtocol input, TProtocol output) {
      TTransport transport = input.getTransport();
      boolean own = owner == null
          || transport instanceof TSocket && owner.equals(userOf(((TSocket) transport).getSocket()));
      if (!own) {
        transport.close();
      }
      return null;
    }

    @Override
    public void preServe() {}

    @Override
    public void deleteContext(ServerContext context, TProtocol input, TProtocol output) {}

    @Override
    public void processContext(ServerContext context, TTransport input, TTransport output) {}
  }

  /** This process's user id, or null where the system does not say who holds a connection. */
  private static String ownUser() throws IOException {
    Path status = Paths.get("/proc/self/status");
    if (!Files.exists(status) || !Files.exists(Paths.get("/proc/net/tcp"))) {
      return null;
    }
    for (String line : Files.readAllLines(status)) {
      if (line.startsWith("Uid:")) {
        return line.split("\\s+")[1];
      }
    }
    return null;
  }

  /** The user id of the process holding the other end of the loopback connection accepted, or "". */
  private static String userOf(Socket accepted) {
    String client = String.format(":%04X", accepted.getPort());
    String server = String.format(":%04X", accepted.getLocalPort());
    for (String table : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
      try {
        List<String> lines = Files.readAllLines(Paths.get(table));
        for (String line : lines.subList(1, lines.size())) {
          // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
          String[] fields = line.trim().split("\\s+");
          if (fields[1].endsWith(client) && fields[2].endsWith(server)) {
            return fields[7];
          }
        }
      } catch (IOException unreadable) {
        // the other table may hold it
      }
    }
    return "";
  }
}
