package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log/tag"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"

	"github.com/agentloop/agentloop/internal/cli"
)

// clusterName is the dev server's one cluster.
const clusterName = "active"

// loopback is where the services but the frontend listen.
const loopback = "127.0.0.1"

// Server runs a development Temporal server, as temporal server start-dev
// does: the four services in this process, on loopback ports, with SQLite
// in memory or in s.DB, until ctx is done.
func (mode) Server(ctx context.Context, s cli.DevServer) error {
	host, port, err := net.SplitHostPort(s.HostPort)
	if err != nil {
		return err
	}
	// The server binds an IP, not a name such as localhost.
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("server: --temporal %s: %w", s.HostPort, err)
	}
	ip := ips[0].Unmap()
	if port == "0" {
		if port, err = freePort(ip.String()); err != nil {
			return err
		}
	}
	s.HostPort = net.JoinHostPort(host, port)
	// The server dials its own frontend here: loopback when it listens on
	// every interface. The other services listen on loopback alone.
	dial := ip.String()
	if ip.IsUnspecified() {
		dial = loopback
	}
	frontend := net.JoinHostPort(dial, port)
	sql := &config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: s.DB,
		// setup: a new file gets the schema; one that has it is kept.
		ConnectAttributes: map[string]string{"mode": "rwc", "setup": "true"}}
	if s.DB == "" {
		// A named database in memory, shared by the server's connections.
		sql.DatabaseName, sql.ConnectAttributes = "agentloop-"+rand.Text(), map[string]string{"mode": "memory", "cache": "shared"}
	}
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, s.Namespace, false, nil)
	if err != nil {
		return err
	}
	if err := sqliteschema.CreateNamespaces(sql, ns); err != nil {
		return fmt.Errorf("the server's database %s: %w", s.DB, err)
	}
	conf := &config.Config{
		Persistence: config.Persistence{DefaultStore: "sqlite", VisibilityStore: "sqlite", NumHistoryShards: 1,
			DataStores: map[string]config.DataStore{"sqlite": {SQL: sql}}},
		ClusterMetadata: &cluster.Config{FailoverVersionIncrement: 10, MasterClusterName: clusterName, CurrentClusterName: clusterName,
			ClusterInformation: map[string]cluster.ClusterInformation{
				clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontend},
			}},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services:            map[string]config.Service{},
		PublicClient:        config.PublicClient{HostPort: frontend},
	}
	conf.Global.Membership.BroadcastAddress = loopback
	conf.Archival.History.State, conf.Archival.Visibility.State = "disabled", "disabled"
	conf.NamespaceDefaults.Archival.History.State, conf.NamespaceDefaults.Archival.Visibility.State = "disabled", "disabled"
	hosts := map[primitives.ServiceName]static.Hosts{}
	for _, svc := range []primitives.ServiceName{primitives.FrontendService, primitives.HistoryService,
		primitives.MatchingService, primitives.WorkerService} {
		bind, p, addr := ip.String(), port, frontend
		if svc != primitives.FrontendService {
			if p, err = freePort(loopback); err != nil {
				return err
			}
			bind, addr = loopback, net.JoinHostPort(loopback, p)
		}
		n, _ := strconv.Atoi(p)
		conf.Services[string(svc)] = config.Service{RPC: config.RPC{GRPCPort: n, BindOnIP: bind}}
		hosts[svc] = static.SingleLocalHost(addr)
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(serverLogger{s.Logger}),
		temporal.WithAuthorizer(authorization.NewNoopAuthorizer()),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return authorization.NewNoopClaimMapper() }),
	)
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	s.Ready(s.HostPort)
	<-ctx.Done()
	return srv.Stop()
}

// freePort returns a port of host that is free now.
func freePort(host string) (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// serverLogger is the Temporal server's logger on the command's. The
// server's debug lines are for its own developers, and are left out.
type serverLogger struct{ l *slog.Logger }

func (s serverLogger) log(level slog.Level, msg string, tags []tag.Tag) {
	if s.l == nil || !s.l.Enabled(context.Background(), level) {
		return
	}
	attrs := make([]any, 0, 2*len(tags))
	for _, t := range tags {
		attrs = append(attrs, t.Key(), t.Value())
	}
	s.l.Log(context.Background(), level, msg, attrs...)
}

func (s serverLogger) Debug(string, ...tag.Tag)           {}
func (s serverLogger) Info(msg string, tags ...tag.Tag)   { s.log(slog.LevelInfo, msg, tags) }
func (s serverLogger) Warn(msg string, tags ...tag.Tag)   { s.log(slog.LevelWarn, msg, tags) }
func (s serverLogger) Error(msg string, tags ...tag.Tag)  { s.log(slog.LevelError, msg, tags) }
func (s serverLogger) DPanic(msg string, tags ...tag.Tag) { s.log(slog.LevelError, msg, tags) }

// Panic and Fatal do what the server expects of them: it does not go on
// after either.
func (s serverLogger) Panic(msg string, tags ...tag.Tag) {
	s.log(slog.LevelError, msg, tags)
	panic(msg)
}

func (s serverLogger) Fatal(msg string, tags ...tag.Tag) {
	s.log(slog.LevelError, msg, tags)
	for _, t := range tags {
		msg += fmt.Sprintf(", %s: %v", t.Key(), t.Value())
	}
	fmt.Fprintln(os.Stderr, "agentloop: the Temporal server stopped:", msg)
	os.Exit(1)
}
